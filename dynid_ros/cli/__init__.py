"""Subcommands of ``dynid``: thin argument parsing over typed core functions."""
