"""The asyncio side: workers and their loops; talks to storage only through ``store.base``."""
