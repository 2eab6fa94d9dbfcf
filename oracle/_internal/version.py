"""The package's version, in the one module every layer may import.

``oracle/__init__.py`` re-exports it as ``oracle.__version__``; modules of the package read it here,
never from the public facade above them (that would make them import the whole API's module).
"""

__version__ = "0.1.0"
