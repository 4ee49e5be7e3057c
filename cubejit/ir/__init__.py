"""cubejit's IR: typed, structured kernels that every backend lowers (see ``nodes``)."""
