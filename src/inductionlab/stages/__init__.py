"""The stage layer: every command a rule runs, from its input files to its output files.

The analyses (:mod:`inductionlab.analysis`) compute on models and tables in memory, and
the reporting (:mod:`inductionlab.report`) draws and renders; a stage reads its inputs,
calls them and writes each output atomically. Commands are declared once, in
:mod:`.commands`, with named options.
"""
