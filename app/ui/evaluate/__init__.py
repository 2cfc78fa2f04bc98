"""The evaluation in the window: the matrix of test cases x variants, its run, its judge, run comparison."""
