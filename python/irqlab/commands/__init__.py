"""One module per `irqlab` command; see irqlab.cli."""
