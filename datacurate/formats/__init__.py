"""On-disk formats and the file-system seam: storage (local / s3://), io (readers and part
writers), fields, token shards, Megatron's indexed dataset, tokenizers."""
