"""``python -m chronomem.cli``."""

from . import main

main(prog_name="chronomem")
