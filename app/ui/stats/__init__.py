"""What the batch is doing: the stats panel, its plots and readouts, a server's metrics, the scaling test."""
