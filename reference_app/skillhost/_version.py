"""The app's version, in a leaf module: the modules that report it import it from here, not from the package
``__init__``, whose ``main`` loads the command line and, through it, those same modules (no import loop)."""

__version__ = "0.1.0"
