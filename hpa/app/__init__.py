"""Process wiring: one TaskGroup per process, leader gating, signal handling."""
