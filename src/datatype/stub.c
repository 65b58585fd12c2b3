int mgdt_placeholder;
