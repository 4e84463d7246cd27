"""oxicuda.dnn."""
