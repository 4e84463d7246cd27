"""oxicuda.sparse."""
