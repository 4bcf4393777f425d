"""WaterSIC."""
