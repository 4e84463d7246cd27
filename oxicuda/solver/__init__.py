"""oxicuda.solver."""
