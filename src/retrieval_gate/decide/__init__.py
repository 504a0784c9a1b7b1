"""Layer 4, deciding: paired statistics over per-query values, the gate policy and its decision
rule, costs. Imports the core (and scoring's measure names)."""
