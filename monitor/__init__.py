"""planwatch: hold an LLM serving fleet against its capacity plan."""

__version__ = "0.1.0"
