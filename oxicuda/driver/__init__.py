"""oxicuda.driver: the driver API, one surface with two implementations (libcuda, emulator)."""
