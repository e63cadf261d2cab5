"""What rota tells operators: structured execution log records."""
