"""``--backend none``: no cap at all, labelled uncapped in every report."""
