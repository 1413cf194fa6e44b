"""qdrant"""
