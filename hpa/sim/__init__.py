"""The simulator: virtual time, a workload model, and the controller code run against in-memory
ports.
"""
