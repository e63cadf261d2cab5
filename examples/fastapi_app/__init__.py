"""A FastAPI service on rota: its worker runs in the application's event loop (the lifespan
enters ``async with rota``), its routes queue jobs and report them, and rota's dashboard is
mounted at ``/rota``.  ``uvicorn examples.fastapi_app.main:app`` serves it (README.md).
"""
