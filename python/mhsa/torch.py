from . import _mhsa
