"""oxicuda.cli."""
