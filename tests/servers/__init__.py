"""Real servers started on loopback for tests."""
