"""An example Django project on rota: a shop whose orders are confirmed by background jobs."""
