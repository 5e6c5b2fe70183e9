"""The write policy (`policy`): what keeps two facts apart (`specifics`) and the memory model's
answer in the uncertain band (`decision`)."""
