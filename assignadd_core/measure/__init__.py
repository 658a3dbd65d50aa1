"""What is measured on a model: the circuit's roles (which block and head copy, look up and add) and the
progress measures."""
