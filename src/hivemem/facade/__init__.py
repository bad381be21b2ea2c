"""The facade: ``ScopedMemory`` and ``Store``/``open`` — thin, they validate and delegate."""
