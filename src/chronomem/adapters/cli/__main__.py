"""``python -m chronomem.adapters.cli``."""

from . import main

main(prog_name="chronomem")
