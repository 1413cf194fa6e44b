"""scores"""
