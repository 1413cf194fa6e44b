"""The tuned spec where users already are: in their own code (``retriever``), and in the
frameworks they build on."""
