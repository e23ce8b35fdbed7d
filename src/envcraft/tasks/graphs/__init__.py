"""Tool dependency graphs per environment, the workflow graph across them, walks over them."""
