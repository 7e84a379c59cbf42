"""The composition root: settings, the wiring of every process (bootstrap), the `mnemo` command, the
doctor and the companion processes. The only part of shared/ that may import bot/ or worker/.
"""
