"""oxicuda.memory."""
