"""The rerankers of the rerank stage: the clients, their score cache, the requests N at a time."""
