"""chorus: programmable collective communication.

The native part is the extension module ``chorus._chorus``. Submodules:

- ``chorus.torch``: importing it registers the torch.distributed backend ``"chorus"``
  (docs/torch.md).
"""

from . import _chorus

__version__ = _chorus.__version__

__all__ = ["__version__"]
