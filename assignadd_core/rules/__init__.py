"""The paper's numbers, the statistics the rules are stated in, and the rules themselves (`verdicts`: every
rule, its levels and `composed`). They sit below the readings because the readings use the rules' levels."""
