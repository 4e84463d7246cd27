"""oxicuda.fft."""
