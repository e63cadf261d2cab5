"""Security findings of issue 15: secrets, sessions and untrusted text, tested end to end."""
