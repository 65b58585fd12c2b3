int mgpk_placeholder;
