# Man pages and documents.
EXTRA_DIST += doc/design.md doc/user-guide.md doc/performance.md
dist_man_MANS += doc/man/man7/mpigpu.7 doc/man/man1/mpigpu-proxy.1 \
	doc/man/man1/mpigpu-pingpong.1 doc/man/man1/mpigpu-collbench.1 doc/man/man1/mpigpu-packbench.1 \
	doc/man/man1/mpigpu-info.1 doc/man/man1/mpigpu-halo.1 \
	doc/man/man3/MPIX_Query_opencl_support.3 doc/man/man3/MPIX_Gpu_get_device.3 \
	doc/man/man3/MPIX_Gpu_set_queue.3 doc/man/man3/MPIX_Gpu_malloc.3 \
	doc/man/man3/MPIX_Gpu_free.3 doc/man/man3/MPIX_Gpu_register.3 \
	doc/man/man3/MPIX_Gpu_deregister.3 doc/man/man3/MPIX_Gpu_query.3 \
	doc/man/man3/MPIX_Gpu_memcpy.3 doc/man/man3/MPIX_Gpu_host_register.3 \
	doc/man/man3/MPIX_Gpu_host_deregister.3 doc/man/man3/MPIX_Gpu_pack_keyval.3 \
	doc/man/man3/MPIX_Enqueue_send.3 \
	doc/man/man3/MPIX_Enqueue_recv.3 doc/man/man3/MPIX_Event_from_request.3 \
	doc/man/man3/MPIX_Enqueue_sendrecv.3 doc/man/man3/MPIX_Enqueue_start.3 \
	doc/man/man3/MPIX_Enqueue_file_write_at.3 doc/man/man3/MPIX_Enqueue_file_read_at.3 \
	doc/man/man3/MPIX_Gpu_malloc_shared.3 doc/man/man3/MPIX_Gpu_sync.3 \
	doc/man/man3/clEnqueueBroadcastWriteBufferMPIGPU.3
