from traceanalyze.cli import run

run()
