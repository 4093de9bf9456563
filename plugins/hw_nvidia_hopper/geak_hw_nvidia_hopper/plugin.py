"""Hook implementations of geak_hw_nvidia_hopper (registers components as they become ready)."""
