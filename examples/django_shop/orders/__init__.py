"""The shop's one app: products, orders, the views that place them and the tasks that follow."""
