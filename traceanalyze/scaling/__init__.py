"""The essay's test for overhead: traces of one program at several sizes, the time per step
fitted against the work per step (docs/scaling.md). `measure` reads one run, `program` checks that
the runs are one program, `fit` fits the line, `model` builds the `Scaling` the renderers format."""
