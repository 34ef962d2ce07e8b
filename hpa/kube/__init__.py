"""The I/O shell to the Kubernetes API server: the only home of kubernetes_asyncio."""
