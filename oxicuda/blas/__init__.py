"""oxicuda.blas."""
