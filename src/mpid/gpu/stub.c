int mgdev_placeholder;
