"""Golden runs: a walk executed for real, its argument choices, the cut to one coherent job."""
