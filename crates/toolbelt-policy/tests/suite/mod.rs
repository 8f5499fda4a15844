mod policy;
