"""The pytest plugin (entry point ``pytest11: rota``): fixtures for testing code that uses rota."""
