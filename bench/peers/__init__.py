"""Peer libraries measured side by side with rota, on the same servers in the same run."""
