"""oxicuda.rand."""
