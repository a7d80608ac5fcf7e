"""KIR, the Kernel IR: typed SSA with regions, explicit effects, a verifier and a text form."""
