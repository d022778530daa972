"""The front doors: the ``boardstream`` command, the Spark jobs' mains and the demo.

Only this package parses command lines and turns domain errors into flag-named messages and
exit codes; the domain packages below it take typed options and raise in their own words.
"""
